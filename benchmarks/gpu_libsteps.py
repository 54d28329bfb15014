"""The GPU check of the library steps of the Triton backend: linear algebra through
``torch.linalg`` (``LibraryStep.torch``, ``functx/control/linalg.py``) and long-row sorts through
``torch.sort`` (``SortStep``, ``functx/lowering/triton/sort.py``), then timings against JAX and
torch, in one process.

Run from the repository root on a CUDA machine (JAX with CUDA installed beside functx):

    python benchmarks/gpu_libsteps.py            # checks, then timings
    python benchmarks/gpu_libsteps.py --checks   # checks only
    python benchmarks/gpu_libsteps.py --quick    # the small-matrix Triton kernels only (~5 min)
    python benchmarks/gpu_libsteps.py --final    # the same, fewer cases (~2 min)
    TRITON_INTERPRET=1 python benchmarks/gpu_libsteps.py --dry   # tiny sizes, CPU interpreter
    python benchmarks/gpu_libsteps.py --explore  # session 33's checks, variants, Newton/GP
    python benchmarks/gpu_libsteps.py --explore --confirm  # the same, defaults only (~2 min)
    python benchmarks/gpu_libsteps.py --chol     # session 34's blocked solve: checks, variants, GP

The small-matrix kernels (``functx/lowering/triton/linalg.py``: cholesky, triangular_solve, LU,
Jacobi eigh for n <= 64; the script turns them all on) are checked first against JAX and NumPy
float64 (n = 3, 16, 33, 64; degenerate and ill-conditioned spectra; a singular LU), then timed
at n = 16, 32, 64 and batches of 64 and 1024 against JAX, torch.linalg and functx's own
torch.linalg steps. H100, 14:28 UTC (float32, ms, functx kernels / JAX / torch / functx through
torch.linalg): cholesky+solve 64x16x16 0.023 / 0.144 / 0.117 / 0.562, 64x32x32 0.038 / 0.156 /
0.794 / 0.659, 64x64x64 0.101 / 0.242 / 1.214 / 0.914, 1024x64x64 0.367 / 0.197 / 0.903 / 0.571;
solve 64x16x16 0.023 / 0.141, 64x64x64 0.211 / 0.196, 1024x64x64 0.655 / 0.354; eigh 64x16x16
0.212 / 0.078 / 0.183 / 0.322, 64x32x32 1.139 / 0.132 / 0.271 / 0.788, 64x64x64 3.06 / 0.448 /
57.9 / 56.1 (1.93 with 8 warps), 1024x64x64 13.0 / 2.27. n = 96 and 128 through the kernels
(MAX_N raised): cholesky+solve 0.48 / 0.57 ms against torch.linalg's 0.64 / 0.62 and JAX's 0.31 /
0.26; eigh 19.9 / 19.8 against 85 / 122 and JAX's 0.75 / 0.96. That run's eigenvectors were not
orthogonal for degenerate spectra (FMA rounding made a[p, q] and a[q, p] differ: fixed since) and
its LU factors differed from JAX's GPU ones (the check now separates P A = L U, JAX's GPU factors
of the regular matrices and LAPACK's of the singular one). One 512x512 float32 eigh:
torch.linalg.eigh 14.7 ms through cuSOLVER, 302.7 through MAGMA, 4.9 in float64; JAX 4.8: the
float32 step now runs in float64 (``control/linalg.EIGH_F64_MIN_N``).

Checks (``functx.jit`` on GPU arrays, compiled to Triton, against ``jax.jit`` on the same GPU):
cholesky + cho_solve of a 512x512 matrix and of 64 64x64 matrices (float32, float64), solve
(LU), eigh (eigenvalues; eigenvectors through ``A V = V diag(w)``), qr and svd (up to signs),
sort/argsort of 4096x4096 float32 rows with NaNs and signed zeros (bit for bit), top_k(16)
(values and indices).

Timings (median of 5 loops ended by one synchronisation): cholesky+solve and eigh of 512x512 and
64x(64x64) float32, sort, argsort and top_k(16) of 4096x4096 float32; each against JAX and torch
(``torch.linalg`` / ``torch.sort`` / ``torch.topk`` called directly). Then the row length where
``torch.sort`` beats the ranking kernel (``TORCH_ROW_MIN``): sorts of 4096 rows of 32 to 1024
elements, both ways.

H200, 2026-11-26 (float32, ms, functx / JAX / torch): cholesky+solve 512 0.454 / 0.433 / 0.444,
64x(64x64) 0.511 / 0.148 / 0.366; eigh 512 14.8 / 4.68 / 14.6, 64x(64x64) 49.6 / 0.387 / 49.4
(torch.linalg.eigh, cuSOLVER's syevd one matrix at a time, bounds it; JAX batches with syevj);
sort 4096x4096 0.951 / 1.140 / 0.545, argsort 1.203 / 2.020 / 0.545, top_k(16) 0.677 / 1.397 /
0.323. Crossover: the ranking kernel wins up to rows of 128 (0.071 against 0.279 ms), torch.sort
from 256 (0.179 against 0.277 ms). Every check passed but top_k's indices against JAX's GPU,
whose top_k does not keep tied elements (NaNs included) in index order (JAX's CPU does).
"""

from __future__ import annotations

import functools
import os
import statistics
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402
from gpu import triton_exe  # noqa: E402  (benchmarks/gpu.py, beside this script)

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.numpy as fnp  # noqa: E402
import functx.scipy.linalg as fsl  # noqa: E402
from functx.lowering.triton import linalg as tlinalg, sort as tsort  # noqa: E402

DRY = "--dry" in sys.argv  # tiny sizes (Triton's interpreter on the CPU)
QUICK = "--quick" in sys.argv  # the small-matrix kernels' checks and timings only (~5 minutes)
FINAL = "--final" in sys.argv  # fewer checks and timings of the small-matrix kernels (~2 minutes)
EXPLORE = "--explore" in sys.argv  # session 33's choices (gpulin19d): checks, variants, workloads
FINAL = FINAL or EXPLORE  # (explore checks the small-matrix kernels at the final sizes)
QUICK = QUICK or FINAL
CONFIRM = "--confirm" in sys.argv  # with --explore: the defaults only (no variants, no sweeps)
CHOL = "--chol" in sys.argv  # session 34's blocked triangular solve (gpuchol34): checks, variants
tlinalg.ENABLED.update(("cholesky", "triangular_solve", "lu", "eigh"))  # (all: checked here)
tlinalg.CUSOLVER_EIGH = tlinalg.LIBRARY_RUNNERS = True  # (checked here too)
if DRY and CHOL:  # (the blocked solve at interpreter sizes: blocks of 16 rows above 8)
    tlinalg.MAX_N, tlinalg.SOLVE_BLOCK = 8, 16
N = 16 if DRY else 512  # a square matrix
B, NB = (4, 8) if DRY else (64, 64)  # a batch of B matrices NB x NB
R, C = (8, 160) if DRY else (4096, 4096)  # rows x columns of the sorts
RESULTS: list[tuple[str, str, str]] = []
#: triangular_solve's (left_side, lower, transpose_a, unit_diagonal), all 16
TRISOLVE_FLAGS = [tuple(bool(f) for f in fl) for fl in np.ndindex(2, 2, 2, 2)]


def say(*a):
    print(*a, flush=True)


def gpu(x):
    return functx.device_put(x, functx.devices("gpu")[0])


def host(x):
    if isinstance(x, np.ndarray):
        return x
    if type(x).__name__ == "GpuArray":
        return np.asarray(functx.device_get(x))
    return np.asarray(torch.from_dlpack(x).cpu())


def check(name):
    def wrap(fn):
        try:
            detail = fn()
            RESULTS.append((name, "PASS", detail or ""))
        except Exception as e:  # report every check, even after a failure
            traceback.print_exc()
            RESULTS.append((name, "FAIL", f"{type(e).__name__}: {str(e)[:200]}"))
        say(f"{RESULTS[-1][1]:5} {name}: {RESULTS[-1][2]}")
        return fn

    return wrap


def spd(shape, dt, rng):
    a = rng.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dt)


def cs(np_, sl):
    return lambda a, b: sl.cho_solve(sl.cho_factor(a), b)


def sort_input(rng):
    x = rng.standard_normal((R, C)).astype(np.float32)
    x[0, : C // 8] = np.nan
    x[1, : C // 4] = 0.0
    x[1, C // 4 : C // 2] = -0.0
    x[2, :5], x[2, 5:9] = np.inf, -np.inf
    x[3] = np.round(x[3])  # many ties
    return x


def run_small_checks():
    """The Triton kernels of small matrices (``functx/lowering/triton/linalg.py``) against JAX
    and NumPy float64: cholesky, the triangular solves (every flag), eigh (random, degenerate and
    ill-conditioned spectra; eigenvalues, residual and orthogonality)."""
    import jax
    import jax.lax.linalg as jll
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(2)
    sizes = (3,) if DRY else (5, 64) if EXPLORE else (3, 16, 64) if FINAL else (3, 16, 33, 64)
    nb = 3 if DRY else 8 if FINAL else 16
    for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-11)):
        for n in sizes:
            name = f"{np.dtype(dt).name} {nb}x{n}x{n}"
            a = spd((nb, n, n), dt, rng)
            b = rng.standard_normal((nb, n, 5)).astype(dt)

            @check(f"Triton cholesky {name}")
            def _():
                got = host(functx.jit(flax.linalg.cholesky)(gpu(a)))
                want = np.linalg.cholesky(a.astype(np.float64))
                err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                assert err < tol * n, f"error {err:.1e} against NumPy float64"
                bad = host(functx.jit(flax.linalg.cholesky)(gpu(-a)))
                low = np.tril_indices(n)
                assert np.isnan(bad[:, low[0], low[1]]).all(), "not positive definite: NaNs"
                return f"rel err {err:.1e}"

            @check(f"Triton triangular_solve {name} ({4 if FINAL else 16} flag combinations)")
            def _():
                worst = 0.0
                flags = TRISOLVE_FLAGS
                for ls, lo, tr, un in flags[::5] if FINAL else flags:
                    kw = dict(left_side=ls, lower=lo, transpose_a=tr, unit_diagonal=un)
                    rhs = b if ls else np.swapaxes(b, -1, -2).copy()
                    f = functx.jit(lambda a, b, kw=kw: flax.linalg.triangular_solve(a, b, **kw))
                    got = host(f(gpu(a), gpu(rhs)))
                    want = np.asarray(jax.jit(lambda a, b, kw=kw: jll.triangular_solve(
                        a, b, **kw))(a, rhs))  # fmt: skip
                    err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                    assert err < tol * n * 10, f"{kw}: error {err:.1e}"
                    worst = max(worst, err)
                return f"worst rel err against JAX {worst:.1e}"

            @check(f"Triton lu + solve {name} (one singular matrix)")
            def _():
                g = rng.standard_normal((nb, n, n)).astype(dt)
                g[0, :, 0] = 0.0  # (singular: keeps its factors, as LAPACK's)
                got = [host(x) for x in functx.jit(flax.linalg.lu)(gpu(g))]
                want = [np.asarray(x) for x in jax.jit(jll.lu)(g)]  # (JAX's GPU: cuSOLVER)
                lapack = [np.asarray(x) for x in flax.linalg.lu(g)]  # (eager: LAPACK's getrf)
                # P A = L U for every matrix
                low = np.tril(got[0], -1) + np.eye(n, dtype=dt)
                rec = low @ np.triu(got[0])
                pa = np.take_along_axis(g, got[2][..., None].astype(np.int64), axis=-2)
                erec = float(np.max(np.abs(rec - pa)) / np.max(np.abs(g)))
                err = float(np.max(np.abs(got[0][1:] - want[0][1:])) / np.max(np.abs(want[0])))
                elap = float(np.max(np.abs(got[0] - lapack[0])) / np.max(np.abs(lapack[0])))
                e0 = float(np.max(np.abs(got[0][0] - want[0][0])) / np.max(np.abs(want[0][0])))
                piv = [int((got[1] != w[1]).sum()) for w in (want, lapack)]
                x = host(functx.jit(fnp.linalg.solve)(gpu(g[1:]), gpu(b[1:])))
                xw = np.asarray(jax.jit(jnp.linalg.solve)(g[1:], b[1:]))
                es = float(np.max(np.abs(x - xw)) / np.max(np.abs(xw)))
                detail = (
                    f"P A = L U {erec:.1e}; factors vs JAX's GPU {err:.1e} (the singular one "
                    f"{e0:.1e}), vs LAPACK {elap:.1e}; pivots differing from JAX/LAPACK {piv}; "
                    f"solve {es:.1e}"
                )
                assert erec < tol * n * 10 and err < tol * n * 10 and es < tol * n * 1e3, detail
                return detail

            q, _ = np.linalg.qr(rng.standard_normal((nb, n, n)))
            spectra = {
                "random": a,
                "degenerate": (q * np.repeat([1.0, 2.0, 3.0], -(-n // 3))[:n])
                @ np.swapaxes(q, -1, -2),
                "ill-conditioned": (q * np.logspace(-6, 6, n)) @ np.swapaxes(q, -1, -2),
            }
            for kind, m in spectra.items():
                m = ((m + np.swapaxes(m, -1, -2)) / 2).astype(dt)

                @check(f"Triton eigh {name} {kind}")
                def _(m=m):
                    v, w = functx.jit(lambda x: tuple(fnp.linalg.eigh(x))[::-1])(gpu(m))
                    v, w = host(v).astype(np.float64), host(w).astype(np.float64)
                    ew, res, orth = _eigh_errors(m, v, w)
                    scale = np.max(np.abs(np.linalg.eigvalsh(m.astype(np.float64))))
                    jw = np.asarray(jax.jit(jnp.linalg.eigvalsh)(m), np.float64)
                    ej = float(np.max(np.abs(w - jw))) / scale
                    assert max(ew, res, orth) < tol * n * 4, (ew, res, orth)
                    # (ascending up to rounding: cuSOLVER's order of equal ones, as JAX's)
                    down = float(-np.min(np.diff(w, axis=-1))) / scale
                    assert down < tol, f"eigenvalues not ascending: {down:.1e}"
                    return (
                        f"eigenvalues {ew:.1e} (NumPy f64), {ej:.1e} (JAX); residual {res:.1e}, "
                        f"orthogonality {orth:.1e}"
                    )


def run_checks():
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)

    def close(got, want, tol):
        got, want = host(got), np.asarray(want)
        assert got.shape == want.shape and got.dtype == want.dtype, (got.dtype, want.dtype)
        err = float(np.max(np.abs(got - want) / (1 + np.abs(want))))
        assert err < tol, f"relative error {err:.2e}"
        return f"max rel err {err:.1e}"

    for dt, tol in ((np.float32, 2e-3), (np.float64, 1e-9)):
        for shape in ((N, N), (B, NB, NB)):
            name = f"{np.dtype(dt).name} {'x'.join(map(str, shape))}"
            a, b = spd(shape, dt, rng), rng.standard_normal((*shape[:-1], 8)).astype(dt)

            @check(f"cholesky + cho_solve {name}")
            def _():
                got = functx.jit(cs(fnp, fsl))(gpu(a), gpu(b))
                return close(got, jax.jit(cs(jnp, jsl))(a, b), tol)

            @check(f"solve (LU) {name}")
            def _():
                got = functx.jit(fnp.linalg.solve)(gpu(a), gpu(b))
                return close(got, jax.jit(jnp.linalg.solve)(a, b), tol * 10)

            @check(f"eigh {name}")
            def _():
                v, w = functx.jit(lambda a: tuple(fnp.linalg.eigh(a))[::-1])(gpu(a))
                jw = jax.jit(jnp.linalg.eigvalsh)(a)
                detail = close(w, jw, tol)
                v, w = host(v), host(w)
                res = np.max(np.abs(a @ v - v * w[..., None, :])) / np.max(np.abs(w))
                assert res < tol * 10, f"residual {res:.1e}"
                return detail + f"; residual {res:.1e}"

    x = rng.standard_normal((2, 48, 32)).astype(np.float32)

    @check("qr, svd 2x48x32 float32 (up to signs)")
    def _():
        q, r = functx.jit(fnp.linalg.qr)(gpu(x))
        jq, jr = jax.jit(jnp.linalg.qr)(x)
        close(np.abs(host(q)), np.abs(np.asarray(jq)), 1e-3)
        close(np.abs(host(r)), np.abs(np.asarray(jr)), 1e-3)
        u, s, vh = functx.jit(lambda x: tuple(fnp.linalg.svd(x, full_matrices=False)))(gpu(x))
        close(s, jax.jit(lambda x: jnp.linalg.svd(x, compute_uv=False))(x), 1e-3)
        rec = host(u) * host(s)[..., None, :] @ host(vh)
        return close(rec, x, 1e-3)

    xs = sort_input(rng)

    @check(f"sort / argsort {R}x{C} float32 with NaNs, signed zeros, ties (bit for bit)")
    def _():
        got = functx.jit(lambda x: (fnp.sort(x), fnp.argsort(x)))(gpu(xs))
        want = jax.jit(lambda x: (jnp.sort(x), jnp.argsort(x)))(xs)
        for g, w in zip(got, want):
            g, w = host(g), np.asarray(w)
            np.testing.assert_array_equal(g.view(np.uint8), w.view(np.uint8))
        return "same bits as JAX"

    @check(f"top_k(16) {R}x{C} float32 (values as JAX's GPU, bit for bit; indices consistent)")
    def _():
        got = [host(g) for g in functx.jit(lambda x: flax.top_k(x, 16))(gpu(xs))]
        want = [np.asarray(w) for w in jax.jit(lambda x: jax.lax.top_k(x, 16))(xs)]
        eager = [np.asarray(e) for e in flax.top_k(xs, 16)]  # (JAX's CPU order)
        np.testing.assert_array_equal(got[0].view(np.uint8), want[0].view(np.uint8))
        # each index points at an element equal to its value (NaNs of either sign count as
        # equal: JAX's GPU top_k, like torch.topk, ranks -NaN and NaN alike, where the CPU
        # order puts -NaN last), and no index repeats within a row
        picked = np.take_along_axis(xs, got[1], axis=-1)
        same = (picked == got[0]) | (np.isnan(picked) & np.isnan(got[0]))
        assert same.all(), f"{int((~same).sum())} indices point at other values"
        assert all(len(set(r)) == len(r) for r in got[1]), "an index repeats in a row"
        return (
            f"indices differing from JAX's GPU ones: {int((got[1] != want[1]).sum())}, from "
            f"the CPU order (ties by index, -NaN last): {int((got[1] != eager[1]).sum())}"
        )


def timeit(fn, sync, reps=5, warmup=3, target_s=0.1):
    if DRY:  # (the interpreter: each call once)
        reps, warmup, target_s = 1, 1, 0.0
    for _ in range(warmup):
        sync(fn())
    t0 = time.perf_counter()
    sync(fn())
    one = max(time.perf_counter() - t0, 1e-6)
    n = max(1, int(target_s / one))
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(n):
            out = fn()
        sync(out)
        times.append((time.perf_counter() - t0) / n)
    return statistics.median(times)


def sync_torch(out):
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def sync_jax(out):
    import jax

    jax.block_until_ready(out)


def run_small_timings():
    """Batches of small matrices: the Triton kernels against JAX, torch.linalg, and functx with
    the kernels off (its torch.linalg steps); then where the kernels stop winning (n = 128 with
    ``MAX_N`` raised), warps per program, and the single 512x512 eigh's libraries."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    rng = np.random.default_rng(3)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []

    def t_cs(a, b):
        return torch.cholesky_solve(b, torch.linalg.cholesky(a))

    def measure(name, *a, **k):
        try:
            measure1(name, *a, **k)
        except Exception as e:  # (one failing row leaves the others)
            traceback.print_exc()
            say(f"{name}: {type(e).__name__}: {str(e)[:200]}")

    def measure1(name, ffn, jfn, tfn, args, off=True):
        off = off and not FINAL  # (--final: functx against JAX only)
        fa = [gpu(x) for x in args]
        ja = [jax.device_put(x) for x in args]
        ta = [torch.from_numpy(x).to(dev) for x in args]
        tf = timeit(lambda: ffn(*fa), sync_torch)
        tj = timeit(lambda: jfn(*ja), sync_jax)
        # (torch.linalg.eigh of 1024 64x64 matrices: one syevd each, ~1 s a call: skipped)
        tt = timeit(lambda: tfn(*ta), sync_torch) if off else float("nan")
        toff = float("nan")
        if off:  # (functx with the kernels off: a new program whose steps call torch.linalg)
            saved = tlinalg.MAX_N
            tlinalg.MAX_N = 0
            try:
                g = functx.jit(lambda *x: ffn(*x))
                toff = timeit(lambda: g(*fa), sync_torch)
            finally:
                tlinalg.MAX_N = saved
        rows.append((name, tf, tj, tt, toff))
        say(f"{name}: functx {tf * 1e3:.3f} ms, JAX {tj * 1e3:.3f}, torch {tt * 1e3:.3f}, "
            f"functx torch.linalg steps {toff * 1e3:.3f}")  # fmt: skip

    sizes = (8,) if DRY else (16, 32, 64)
    batches = (4,) if DRY else (64,) if FINAL else (64, 1024)
    dts = (np.float32,) if QUICK or DRY else (np.float32, np.float64)
    for dt in dts:
        for n in sizes:
            for nb in batches:
                a = spd((nb, n, n), dt, rng)
                b = rng.standard_normal((nb, n, 8)).astype(dt)
                tag = f"{nb}x{n}x{n} {np.dtype(dt).name}"
                measure(f"cholesky+solve {tag}", functx.jit(cs(fnp, fsl)),
                        jax.jit(cs(jnp, jsl)), t_cs, (a, b))  # fmt: skip
                measure(f"solve {tag}", functx.jit(fnp.linalg.solve), jax.jit(jnp.linalg.solve),
                        torch.linalg.solve, (a, b))  # fmt: skip
                measure(f"eigh {tag}", functx.jit(fnp.linalg.eigh), jax.jit(jnp.linalg.eigh),
                        torch.linalg.eigh, (a,), off=n <= 32 or nb == 64)  # fmt: skip
    say("\n| workload | functx ms | JAX ms | torch ms | functx via torch.linalg ms | functx/JAX |")
    say("|---|---|---|---|---|---|")
    for name, a, b, c, d in rows:
        say(f"| {name} | {a * 1e3:.3f} | {b * 1e3:.3f} | {c * 1e3:.3f} | {d * 1e3:.3f} | "
            f"{a / b:.2f} |")  # fmt: skip
    if DRY:
        return
    if FINAL:  # the eigensolver's warps at 32 and 64, torch's float32/float64 eigh at 256, 512
        say("\n| float32 eigh, warps | 64 x 32 | 64 x 64 |\n|---|---|---|")
        saved = dict(tlinalg.EIGH_WARPS)
        for w in (4, 8):
            ts = []
            for n in (32, 64):
                tlinalg.EIGH_WARPS[n] = w
                g = functx.jit(lambda a: fnp.linalg.eigh(a)[0] * 1.0)
                fa = gpu(spd((64, n, n), np.float32, rng))
                ts.append(timeit(lambda: g(fa), sync_torch, reps=3))
                tlinalg.EIGH_WARPS.update(saved)
            say(f"| {w} | {ts[0] * 1e3:.3f} | {ts[1] * 1e3:.3f} |")
        if torch.cuda.is_available():
            say("\n| torch.linalg.eigh of one n x n | float32 ms | float64 ms |\n|---|---|---|")
            for n in (256, 512):
                x = torch.from_numpy(spd((n, n), np.float32, rng)).cuda()
                t32 = timeit(lambda: torch.linalg.eigh(x), sync_torch, reps=3)
                t64 = timeit(lambda: torch.linalg.eigh(x.double()), sync_torch, reps=3)
                say(f"| {n} | {t32 * 1e3:.3f} | {t64 * 1e3:.3f} |")
        return
    # warps per program
    say("\n| float32, warps | 64 x 16 eigh | 64 x 32 eigh | 64 x 64 eigh | 1024 x 64 cho |")
    say("|---|---|---|---|---|")
    mats = {n: spd((64, n, n), np.float32, rng) for n in (16, 32, 64)}
    big = spd((1024, 64, 64), np.float32, rng)
    bb = rng.standard_normal((1024, 64, 8)).astype(np.float32)
    saved = dict(tlinalg.EIGH_WARPS), dict(tlinalg.WARPS)
    for w in (1, 2, 4, 8):
        ts = []
        for n in (16, 32, 64):
            tlinalg.EIGH_WARPS[n] = w
            g = functx.jit(lambda a: fnp.linalg.eigh(a)[0] * 1.0)
            fa = gpu(mats[n])
            ts.append(timeit(lambda: g(fa), sync_torch))
        tlinalg.WARPS[64] = w
        g1 = functx.jit(lambda a, b: cs(fnp, fsl)(a, b) * 1.0)
        fa, fb = gpu(big), gpu(bb)
        ts.append(timeit(lambda: g1(fa, fb), sync_torch))
        tlinalg.EIGH_WARPS.update(saved[0])
        tlinalg.WARPS.update(saved[1])
        say(f"| {w} | " + " | ".join(f"{t * 1e3:.3f}" for t in ts) + " |")
    # torch.linalg.eigh in float32 and in float64 (control/linalg.EIGH_F64_MIN_N)
    if torch.cuda.is_available():
        say("\n| torch.linalg.eigh of one n x n | float32 ms | float64 ms |\n|---|---|---|")
        for n in (64, 96, 128, 192, 256, 384, 512):
            x = torch.from_numpy(spd((n, n), np.float32, rng)).cuda()
            xd = x.double()
            t32 = timeit(lambda: torch.linalg.eigh(x), sync_torch)
            t64 = timeit(lambda: torch.linalg.eigh(xd), sync_torch)
            say(f"| {n} | {t32 * 1e3:.3f} | {t64 * 1e3:.3f} |")
    # the single 512x512 eigh: cuSOLVER's syevd (torch's default) against MAGMA's, and JAX
    if torch.cuda.is_available():
        x = torch.from_numpy(spd((512, 512), np.float32, rng)).cuda()
        say("\n| eigh 512x512 float32 | ms |\n|---|---|")
        for lib in ("cusolver",):  # (MAGMA's: 302.7 ms on the H100, 14:28 UTC run)
            try:
                torch.backends.cuda.preferred_linalg_library(lib)
                say(f"| torch.linalg.eigh ({lib}) | "
                    f"{timeit(lambda: torch.linalg.eigh(x), sync_torch) * 1e3:.3f} |")  # fmt: skip
            except Exception as e:
                say(f"| torch.linalg.eigh ({lib}) | {type(e).__name__}: {str(e)[:80]} |")
        torch.backends.cuda.preferred_linalg_library("default")
        xj = jax.device_put(x.cpu().numpy())
        say(f"| JAX eigh | {timeit(lambda: jax.jit(jnp.linalg.eigh)(xj), sync_jax) * 1e3:.3f} |")
        fe = functx.jit(fnp.linalg.eigh)
        xf = gpu(x.cpu().numpy())
        say(f"| functx eigh (float64 step) | {timeit(lambda: fe(xf), sync_torch) * 1e3:.3f} |")


def run_timings():
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    rng = np.random.default_rng(1)
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    rows = []

    def row(name, ffn, fargs, jfn, jargs, tfn, targs):
        tf = timeit(lambda: ffn(*fargs), sync_torch)
        tj = timeit(lambda: jfn(*jargs), sync_jax)
        tt = timeit(lambda: tfn(*targs), sync_torch)
        rows.append((name, tf, tj, tt))
        say(f"{name}: functx {tf * 1e3:.3f} ms, JAX {tj * 1e3:.3f} ms, torch {tt * 1e3:.3f} ms")

    def t_cs(a, b):
        return torch.cholesky_solve(b, torch.linalg.cholesky(a))

    for shape in ((N, N), (B, NB, NB)):
        name = "x".join(map(str, shape))
        a = spd(shape, np.float32, rng)
        b = rng.standard_normal((*shape[:-1], 8)).astype(np.float32)
        ta, tb = torch.from_numpy(a).to(dev), torch.from_numpy(b).to(dev)
        row(
            f"cholesky+solve {name} float32",
            functx.jit(cs(fnp, fsl)),
            (gpu(a), gpu(b)),
            jax.jit(cs(jnp, jsl)),
            (jax.device_put(a), jax.device_put(b)),
            t_cs,
            (ta, tb),
        )
        row(
            f"eigh {name} float32",
            functx.jit(fnp.linalg.eigh),
            (gpu(a),),
            jax.jit(jnp.linalg.eigh),
            (jax.device_put(a),),
            torch.linalg.eigh,
            (ta,),
        )
    x = rng.standard_normal((R, C)).astype(np.float32)
    fx, jx, tx = gpu(x), jax.device_put(x), torch.from_numpy(x).to(dev)
    row(f"sort {R}x{C} float32", functx.jit(fnp.sort), (fx,), jax.jit(jnp.sort), (jx,),
        lambda t: torch.sort(t, stable=True).values, (tx,))  # fmt: skip
    row(f"argsort {R}x{C} float32", functx.jit(fnp.argsort), (fx,), jax.jit(jnp.argsort), (jx,),
        lambda t: torch.sort(t, stable=True).indices, (tx,))  # fmt: skip
    row(f"top_k(16) {R}x{C} float32", functx.jit(lambda x: flax.top_k(x, 16)), (fx,),
        jax.jit(lambda x: jax.lax.top_k(x, 16)), (jx,), lambda t: torch.topk(t, 16),
        (tx,))  # fmt: skip
    say("\n| workload | functx ms | JAX ms | torch ms | functx/JAX |\n|---|---|---|---|---|")
    for name, a, b, c in rows:
        say(f"| {name} | {a * 1e3:.3f} | {b * 1e3:.3f} | {c * 1e3:.3f} | {a / b:.2f} |")
    # where torch.sort starts to win over the ranking kernel
    say("\n| sort of 4096 rows of n float32 | ranking kernel ms | torch.sort step ms |")
    say("|---|---|---|")
    saved = tsort.TORCH_ROW_MIN
    try:
        for n in (8, 16) if DRY else (32, 64, 128, 256, 512, 1024):
            xn = gpu(rng.standard_normal((8 if DRY else 4096, n)).astype(np.float32))
            ts = []
            for cut in (1 << 30, 1):
                tsort.TORCH_ROW_MIN = cut
                f = functx.jit(lambda x: fnp.sort(x) * 1.0)  # (a new function: a new program)
                ts.append(timeit(lambda f=f: f(xn), sync_torch))
            say(f"| {n} | {ts[0] * 1e3:.3f} | {ts[1] * 1e3:.3f} |")
    finally:
        tsort.TORCH_ROW_MIN = saved


def _cases(*cases):
    """(batch, n) pairs; tiny ones under ``--dry``."""
    return tuple((min(nb, 2), min(n, 5)) for nb, n in cases) if DRY else cases


def _graphs(jf):
    """How the program ran its last call: CUDA graph or direct launches (and why)."""
    e = triton_exe(jf)
    if e is None:
        return "?"
    if not e.graph_safe:
        return "no graph (a step is not graph-safe)"
    return "graph" if e.use_graphs and not e.graph_note else f"no graph {e.graph_note[:80]}"


def _eigh_errors(m, v, w):
    """(eigenvalue error against NumPy float64, residual, orthogonality), relative."""
    n = m.shape[-1]
    v, w, m64 = v.astype(np.float64), w.astype(np.float64), m.astype(np.float64)
    ref = np.linalg.eigvalsh(m64)
    scale = np.max(np.abs(ref))
    ew = float(np.max(np.abs(w - ref))) / scale
    res = float(np.max(np.abs(m64 @ v - v * w[..., None, :]))) / scale
    orth = float(np.max(np.abs(np.swapaxes(v, -1, -2) @ v - np.eye(n))))
    return ew, res, orth


def _explore_row(rows):
    """``row(name, make, jfn, args, **patch)``: times ``functx.jit(make())`` with the attributes
    ``patch`` of functx/lowering/triton/linalg.py set while it compiles and runs, and ``jfn``
    (JAX, or None), on ``args``; its results' largest relative difference from JAX's (those of
    the last row with ``jfn``: rows without one time variants of the row before); appends to
    ``rows`` and prints."""
    import jax

    ref = []  # (JAX's results of the last row that ran JAX)

    def leaves(out):
        return [host(o) for o in (out if isinstance(out, (list, tuple)) else [out])]

    def row(name, make, jfn, args, **patch):
        saved = {k: getattr(tlinalg, k) for k in patch}
        ena = set(tlinalg.ENABLED)
        got = None
        try:
            for k, v in patch.items():
                setattr(tlinalg, k, v)
            f = functx.jit(make())
            fa = [gpu(x) for x in args]
            tf = timeit(lambda: f(*fa), sync_torch, reps=3)
            how = _graphs(f)
            got = leaves(f(*fa))
        except Exception as e:  # (one failing row leaves the others)
            traceback.print_exc()
            tf, how = float("nan"), f"{type(e).__name__}: {str(e)[:100]}"
        finally:
            for k, v in saved.items():
                setattr(tlinalg, k, v)
            tlinalg.ENABLED.clear()
            tlinalg.ENABLED.update(ena)
        tj = float("nan")
        if jfn is not None:
            ja = [jax.device_put(x) for x in args]
            tj = timeit(lambda: jfn(*ja), sync_jax, reps=3)
            ref[:] = leaves(jfn(*ja))
        err = float("nan")
        if got is not None and ref:
            err = max(float(np.max(np.abs(g - w)) / np.max(np.abs(w))) for g, w in zip(got, ref))
        rows.append((name, tf, tj, f"{how}; vs JAX {err:.1e}"))
        say(f"{name}: functx {tf * 1e3:.3f} ms, JAX {tj * 1e3:.3f} ({how}; vs JAX {err:.1e})")

    return row


def run_explore_checks():
    """The library runners of operands larger than the kernels (torch.linalg into the outputs)
    and eigh's cuSOLVER calls, against JAX and NumPy float64, each program called four times
    (the later calls replay its CUDA graph); the in-place Cholesky kernel."""
    import jax
    import jax.numpy as jnp

    from functx.lowering.triton import cusolver

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    say(f"cuSOLVER eigensolvers: {cusolver.available()} {cusolver.reason()}")
    rng = np.random.default_rng(7)

    for dt, tol in ((np.float32, 1e-4), (np.float64, 1e-11)):
        dn = np.dtype(dt).name
        for nb, n in _cases((16, 16), (16, 33), (16, 64)):

            @check(f"cholesky kernel (in place) {dn} {nb}x{n}x{n}")
            def _(nb=nb, n=n):
                a = spd((nb, n, n), dt, rng)
                f = functx.jit(flax.linalg.cholesky)
                got = four(f, gpu(a))[0]
                want = np.linalg.cholesky(a.astype(np.float64))
                err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
                bad = host(functx.jit(flax.linalg.cholesky)(gpu(-a)))
                low = np.tril_indices(n)
                assert np.isnan(bad[:, low[0], low[1]]).all(), "not positive definite: NaNs"
                assert err < tol * n, f"error {err:.1e}"
                return f"rel err {err:.1e}; {_graphs(f)}"

        eig_cases = ((64, 32), (16, 20), (16, 33), (1, 64))
        for nb, n in _cases(*eig_cases):
            q, _ = np.linalg.qr(rng.standard_normal((nb, n, n)))
            spectra = {
                "random": spd((nb, n, n), np.float64, rng),
                "degenerate": (q * np.repeat([1.0, 2.0, 3.0], -(-n // 3))[:n]) @ q.mT,
            }
            for kind, m in spectra.items():
                m = ((m + np.swapaxes(m, -1, -2)) / 2).astype(dt)

                @check(f"eigh cuSOLVER {dn} {nb}x{n}x{n} {kind}"
                       + (" (syevjBatched)" if n <= 32 and nb > 1 else ""))  # fmt: skip
                def _(m=m, n=n):
                    f = functx.jit(lambda x: tuple(fnp.linalg.eigh(x, UPLO="U"))[::-1])
                    v, w = four(f, gpu(m))
                    ew, res, orth = _eigh_errors(m, v, w)
                    jw = np.asarray(jax.jit(jnp.linalg.eigvalsh)(m), np.float64)
                    ej = float(np.max(np.abs(w - jw))) / np.max(np.abs(jw))
                    assert max(ew, res, orth) < tol * n * 4, (ew, res, orth)
                    # (ascending up to rounding: equal ones as cuSOLVER gives them, as JAX's)
                    down = float(-np.min(np.diff(w, axis=-1))) / np.max(np.abs(jw))
                    assert down < tol, f"eigenvalues not ascending: {down:.1e}"
                    return (f"eigenvalues {ew:.1e} (NumPy f64), {ej:.1e} (JAX); residual "
                            f"{res:.1e}, orthogonality {orth:.1e}; {_graphs(f)}")  # fmt: skip

        ((nb, n),) = _cases((16, 64))

        @check(f"solve {dn} {nb}x{n}x{n}, {n} right-hand sides (several programs a matrix)")
        def _(nb=nb, n=n):
            a = rng.standard_normal((nb, n, n)).astype(dt) + 4 * np.eye(n, dtype=dt)
            b = rng.standard_normal((nb, n, n)).astype(dt)
            f = functx.jit(fnp.linalg.solve)
            got = four(f, gpu(a), gpu(b))[0]
            want = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
            err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
            assert err < tol * n * 10, f"error {err:.1e} against NumPy float64"
            return f"rel err {err:.1e}; {_graphs(f)}"

        for nb, n in _cases((2, 96), (1, 512)):
            check_runners(dt, tol, nb, n, rng)


def four(f, *args):
    """``f(*args)`` called four times (the later calls replay the program's CUDA graph), each
    giving the same bits; the first call's results on the host."""
    outs = [f(*args) for _ in range(4)]
    outs = [[host(o) for o in (x if isinstance(x, (list, tuple)) else [x])] for x in outs]
    for o in outs[1:]:
        for a, b in zip(o, outs[0]):
            np.testing.assert_array_equal(a, b)  # (graph replays give the same bits)
    return outs[0]


def check_runners(dt, tol, nb, n, rng, flags=None):
    """The steps of operands larger than the kernels (the blocked triangular solve, torch.linalg's
    Cholesky) against JAX and NumPy float64: cho_factor (upper) + cho_solve, a matrix that is not
    positive definite (NaN factor and solution, as JAX's), triangular_solve with ``flags`` (all
    16 by default) and garbage in the other triangle; each program called four times."""
    import jax
    import jax.lax.linalg as jll
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    flags = TRISOLVE_FLAGS if flags is None else flags

    @check(f"library runners {np.dtype(dt).name} {nb}x{n}x{n}: cho_factor (upper) + cho_solve, "
           f"not positive definite, triangular solves ({len(flags)} flag sets)")  # fmt: skip
    def _():
        a = spd((nb, n, n), dt, rng)
        b = rng.standard_normal((nb, n, 4)).astype(dt)
        f = functx.jit(cs(fnp, fsl))
        got = four(f, gpu(a), gpu(b))[0]
        want = np.asarray(jax.jit(cs(jnp, jsl))(a, b))
        ref = np.linalg.solve(a.astype(np.float64), b.astype(np.float64))
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        e64 = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
        ej64 = float(np.max(np.abs(want - ref)) / np.max(np.abs(ref)))
        assert err < tol * n * 10 and e64 <= max(10 * ej64, tol), (
            f"cho_solve error {err:.1e} vs JAX, {e64:.1e} vs float64 (JAX's {ej64:.1e})"
        )
        bad = a.copy()
        bad[:, n // 2, n // 2] = -1.0
        got = four(functx.jit(fnp.linalg.cholesky), gpu(bad))[0]
        low = np.tril_indices(n)
        assert np.isnan(got[:, low[0], low[1]]).all(), "not positive definite: NaNs"
        x = four(f, gpu(bad), gpu(b))[0]
        xj = np.asarray(jax.jit(cs(jnp, jsl))(bad, b))
        assert np.isnan(x).all() and np.isnan(xj).all(), "cho_solve: NaNs (JAX's too)"
        t = np.tril(a) + np.triu(rng.standard_normal(a.shape).astype(dt) * 1e3, 1)
        worst = w64 = 0.0
        for ls, lo, tr, un in flags:
            kw = dict(left_side=ls, lower=lo, transpose_a=tr, unit_diagonal=un)
            m = t if lo else np.swapaxes(t, -1, -2).copy()
            rhs = b if ls else np.swapaxes(b, -1, -2).copy()
            g = functx.jit(lambda a, b, kw=kw: flax.linalg.triangular_solve(a, b, **kw))
            x = four(g, gpu(m), gpu(rhs))[0]
            xw = np.asarray(jax.jit(lambda a, b, kw=kw: jll.triangular_solve(
                a, b, **kw))(m, rhs))  # fmt: skip
            op = np.tril(m) if lo else np.triu(m)
            op = (op - op * np.eye(n) + np.eye(n) if un else op).astype(np.float64)
            op = np.swapaxes(op, -1, -2) if tr else op
            if ls:
                ref = np.linalg.solve(op, rhs.astype(np.float64))
            else:  # (X op = B)
                ref = np.swapaxes(np.linalg.solve(np.swapaxes(op, -1, -2), np.swapaxes(
                    rhs, -1, -2).astype(np.float64)), -1, -2)  # fmt: skip
            e = float(np.max(np.abs(x - xw)) / np.max(np.abs(xw)))
            e_ref = float(np.max(np.abs(x - ref)) / np.max(np.abs(ref)))
            e_jax = float(np.max(np.abs(xw - ref)) / np.max(np.abs(ref)))
            # (against float64: within 10 times JAX's own error)
            assert e_ref <= max(10 * e_jax, tol), (
                f"{kw}: error {e:.1e} against JAX, {e_ref:.1e} against NumPy float64 (JAX's "
                f"{e_jax:.1e})"
            )
            worst = max(worst, e)
            w64 = max(w64, e_ref / max(e_jax, np.finfo(dt).eps))
        return (
            f"cho_solve {err:.1e} vs JAX, {e64:.1e} vs f64 (JAX's {ej64:.1e}); solves "
            f"{worst:.1e} vs JAX, f64 error at most {w64:.1f}x JAX's; {_graphs(f)}"
        )


def _profile(name, fn, rows=10):
    """The CUDA kernels of 20 calls of ``fn`` (functx's or JAX's: the profiler sees both)."""
    if not torch.cuda.is_available():
        return
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            out = fn()
        sync_torch(out)
    say(f"\n{name}: the kernels of 20 calls")
    say(prof.key_averages().table(sort_by="cuda_time_total", row_limit=rows,
                                  max_name_column_width=60))  # fmt: skip


def run_explore_timings():
    """Session 33's choices (gpulin19d), float32, ms, functx / JAX: eigh of batches of 32x32
    (syevjBatched) and 64x64; cholesky+solve (with the kernels of the single 512x512's
    program); solve (LU and two triangular solves) of 1, 8 and 64 right-hand sides and the
    Newton step with 4, 8 (the default) or 32 right-hand-side columns a solve program.
    ``--confirm``: the defaults only."""
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    jax.config.update("jax_enable_x64", False)
    functx.config.update("jax_enable_x64", False)
    rng = np.random.default_rng(8)
    rows = []
    row = _explore_row(rows)

    eigh = lambda: lambda a: fnp.linalg.eigh(a)  # noqa: E731
    je = jax.jit(jnp.linalg.eigh)
    for nb, n in _cases((64, 32), (1024, 32), (64, 64)):
        a = spd((nb, n, n), np.float32, rng)
        row(f"eigh {nb}x{n}x{n}", eigh, je, (a,))

    chs = lambda: cs(fnp, fsl)  # noqa: E731
    jc = jax.jit(cs(jnp, jsl))
    for nb, n in _cases((1, 512), (16, 512), (64, 64), (1024, 64)):
        a, b = spd((nb, n, n), np.float32, rng), rng.standard_normal((nb, n, 8)).astype(np.float32)
        tag = f"cholesky+solve {nb}x{n}x{n}"
        row(tag, chs, jc, (a, b))
        if nb == 1 and not CONFIRM:
            f = functx.jit(chs())
            fa = (gpu(a), gpu(b))
            _profile(f"functx {tag}", lambda: f(*fa), rows=14)
    js = jax.jit(jnp.linalg.solve)
    solve = lambda: fnp.linalg.solve  # noqa: E731
    for nb, n, k in ((16, 64, 1), (16, 64, 8), (16, 64, 64), (1024, 64, 8), (1024, 64, 1)):
        ((nb, n),) = _cases((nb, n))
        a = spd((nb, n, n), np.float32, rng) + rng.standard_normal((nb, n, n)).astype(np.float32)
        b = rng.standard_normal((nb, n, k)).astype(np.float32)
        tag = f"solve {nb}x{n}x{n}, {k} rhs"
        row(tag, solve, js, (a, b))
        if CONFIRM:
            continue
        for bk in (4, 32) if k > 4 and not CONFIRM else ():
            row(f"{tag}: {bk} columns a program", solve, None, (a, b), RHS_BLOCK=bk)
        if k > 4 and not CONFIRM:
            row(f"{tag}: solves with 2 warps", solve, None, (a, b),
                _trisolve_warps=lambda bn, b: 2)  # fmt: skip
    # the Newton step (benchmarks/workloads.py), two of whose solves have 64 columns
    sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
    import workloads as W

    c = dict(P=2, n=64, d=8) if DRY else dict(P=16, n=1024, d=64)
    args = W.inputs("newton", c)
    jn = jax.jit(W.program(jax, "newton", c))
    newton = lambda: W.program(functx, "newton", c)  # noqa: E731
    row(f"newton {c}", newton, jn, args)
    for bk in () if CONFIRM else (4, 32):
        row(f"newton {c}: {bk} columns a program", newton, None, args, RHS_BLOCK=bk)
    table(rows)


def table(rows):
    say("\n| workload float32 | functx ms | JAX ms | functx/JAX | program |\n|---|---|---|---|---|")
    for name, a, b, how in rows:
        say(f"| {name} | {a * 1e3:.3f} | {b * 1e3:.3f} | {a / b:.2f} | {how} |")


def run_chol_checks():
    """Session 34's blocked triangular solve (gpuchol34; above ``MAX_N`` rows): ``check_runners``
    at sizes with one, several and a partial block, float32 and float64."""
    import jax

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(34)
    t0 = time.perf_counter()
    for dt, tol, many in ((np.float32, 1e-4, (96, 512)), (np.float64, 1e-11, (200,))):
        for nb, n in ((1, 20),) if DRY else ((2, 96), (3, 200), (1, 512)):
            # (all 16 flag sets at two sizes in float32 and one in float64, else 4)
            flags = TRISOLVE_FLAGS if n in many else TRISOLVE_FLAGS[::5]
            check_runners(dt, tol, nb, n, rng, flags)
    check_nan_places(rng)
    say(f"(checks took {time.perf_counter() - t0:.0f} s)")


def check_nan_places(rng):
    """Where one NaN in the operator, or in B, of a 512x512 float32 solve leaves NaNs:
    functx's, JAX's (cuBLAS) and LAPACK's (SciPy, float64) places, reported (not asserted)."""
    import jax
    import jax.lax.linalg as jll
    import scipy.linalg

    n = 20 if DRY else 512

    @check(f"NaN places of a 1x{n}x{n} float32 solve, one NaN in the operator or in B")
    def _():
        low = np.linalg.cholesky(spd((1, n, n), np.float64, rng)).astype(np.float32)
        b = rng.standard_normal((1, n, 4)).astype(np.float32)
        kw = dict(left_side=True, lower=True)
        g = functx.jit(functools.partial(flax.linalg.triangular_solve, **kw))
        jg = jax.jit(functools.partial(jll.triangular_solve, **kw))
        out = []
        i = n * 5 // 8 + 3  # (within a block of 64 rows)
        for what in ("operator", "B"):
            l2, b2 = low.copy(), b.copy()
            if what == "operator":
                l2[0, i, i - 2] = np.nan
            else:
                b2[0, i, 1] = np.nan
            x, xj = host(g(gpu(l2), gpu(b2))), np.asarray(jg(l2, b2))
            xl = scipy.linalg.solve_triangular(l2[0].astype(np.float64), b2[0], lower=True,
                                               check_finite=False)  # fmt: skip
            ok = ~np.isnan(x) & ~np.isnan(xj)
            err = float(np.max(np.abs(x - xj)[ok]) / np.max(np.abs(xj)[ok]))
            out.append(
                f"{what}: NaNs functx {int(np.isnan(x).sum())}, JAX {int(np.isnan(xj).sum())} "
                f"(same places: {np.array_equal(np.isnan(x), np.isnan(xj))}), LAPACK "
                f"{int(np.isnan(xl).sum())}; elsewhere {err:.1e} vs JAX"
            )
        return "; ".join(out)


def run_chol_kernels():
    """GPU time of the blocked solve's launches (``_blocked_trisolve``'s ``run.launches``), us a
    solve: 20 solves captured in a CUDA graph, replayed between CUDA events (the median of 5),
    both launches, ``trinv`` alone and ``trisolve_blocks`` alone, for cho_solve's first solve
    of one 512x512 float32 matrix with 8 right-hand sides, by variant."""
    if not torch.cuda.is_available():
        return
    n, k = 512, 8
    a = spd((1, n, n), np.float32, np.random.default_rng(36))
    a = torch.linalg.cholesky(torch.from_numpy(a).cuda()).reshape(-1)
    b = torch.randn(n * k, device="cuda")
    out = torch.empty_like(b)
    w = torch.empty(2 * n * n, device="cuda")  # (the workspace: at least any variant's)
    variants = {
        "default": {},
        "3 stages (Triton's default)": dict(SOLVE_STAGES=3),
        "8 warps": dict(SOLVE_WARPS=8),
        "products of 128 columns": dict(SOLVE_K=128),
        "trinv 2 columns a program": dict(RHS_BLOCK=2),
    }
    say("\n| blocked solve 512x512, 8 rhs, float32 | both us | trinv us | trisolve_blocks us |")
    say("|---|---|---|---|")
    for name, patch in variants.items():
        saved = {key: getattr(tlinalg, key) for key in patch}
        try:
            for key, v in patch.items():
                setattr(tlinalg, key, v)
            run = tlinalg._blocked_trisolve(1, n, k, True, (n, 1), (k, 1), False)
            us = []
            for fns in (run.launches, run.launches[:1], run.launches[1:]):
                for f in fns:  # (compiled outside the capture)
                    f([a, b], [out], w)
                torch.cuda.synchronize()
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    for _ in range(20):
                        for f in fns:
                            f([a, b], [out], w)
                g.replay()
                times = []
                for _ in range(5):
                    t0, t1 = (
                        torch.cuda.Event(enable_timing=True),
                        torch.cuda.Event(enable_timing=True),
                    )
                    t0.record()
                    g.replay()
                    t1.record()
                    t1.synchronize()
                    times.append(t0.elapsed_time(t1) * 1e3 / 20)
                us.append(statistics.median(times))
            say(f"| {name} | {us[0]:.1f} | {us[1]:.1f} | {us[2]:.1f} |")
        except Exception as e:  # (one failing variant leaves the others)
            traceback.print_exc()
            say(f"| {name} | {type(e).__name__}: {str(e)[:100]} | | |")
        finally:
            for key, v in saved.items():
                setattr(tlinalg, key, v)


def run_chol_timings():
    """Session 34's choices (gpuchol34), ms, functx / JAX: cholesky+solve of one 512x512 (8
    right-hand sides) with the blocked solve (3 stages, 8 warps, blocks of 128 rows) and with
    torch.linalg's right-side trsm (session 33); the solve alone with 8 and 512 right-hand
    sides (one host step: no CUDA graph unless forced); 16 512x512s; float64; batches of 64x64;
    the profiles of the 512x512 program (functx's and JAX's). (H100, 21:40 UTC, cholesky+solve
    512x512 ms: tf32x3 products 0.417, products of 128 columns 0.454, of 256 (8 warps) 0.445,
    blocks of 32 rows with products of 256 columns 0.555, torch's left-side trsm 0.386; the
    blocked solve at 1 stage 0.363, at 3 0.395; JAX 0.433.)"""
    import jax
    import jax.lax.linalg as jll
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl

    jax.config.update("jax_enable_x64", True)
    functx.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(35)
    rows = []
    row = _explore_row(rows)
    chs = lambda: cs(fnp, fsl)  # noqa: E731
    jc = jax.jit(cs(jnp, jsl))
    n = 20 if DRY else 512
    for dt in (np.float32, np.float64):
        a, b = spd((1, n, n), dt, rng), rng.standard_normal((1, n, 8)).astype(dt)
        tag = f"cholesky+solve 1x{n}x{n} {np.dtype(dt).name}"
        row(tag, chs, jc, (a, b))
        row(f"{tag}: torch.linalg (right-side trsm)", chs, None, (a, b), BLOCKED_SOLVE=False)
        if dt == np.float64:
            continue
        for name, patch in (
            ("3 stages", dict(SOLVE_STAGES=3)),
            ("8 warps", dict(SOLVE_WARPS=8)),
            ("blocks of 128 rows", dict(SOLVE_BLOCK=128)),
        ):
            row(f"{tag}: {name}", chs, None, (a, b), **patch)
        f = functx.jit(chs())
        fa = (gpu(a), gpu(b))
        _profile(f"functx {tag}", lambda: f(*fa), rows=12)
        ja = [jax.device_put(x) for x in (a, b)]
        _profile(f"JAX {tag}", lambda: jc(*ja), rows=12)
        low = np.linalg.cholesky(a.astype(np.float64)).astype(dt)
        kw = dict(left_side=True, lower=True)
        for k in (8, 512):
            rhs = rng.standard_normal((1, n, k)).astype(dt)
            tag = f"triangular_solve 1x{n}x{n}, {k} rhs"
            ts = lambda: functools.partial(flax.linalg.triangular_solve, **kw)  # noqa: E731
            row(tag, ts, jax.jit(functools.partial(jll.triangular_solve, **kw)), (low, rhs))
            os.environ["FUNCTX_CUDA_GRAPHS"] = "1"
            try:
                row(f"{tag}: CUDA graph forced", ts, None, (low, rhs))
            finally:
                del os.environ["FUNCTX_CUDA_GRAPHS"]
            row(f"{tag}: torch.linalg", ts, None, (low, rhs), BLOCKED_SOLVE=False)
    for nb, n in _cases((16, 512), (64, 64), (1024, 64)):
        a = spd((nb, n, n), np.float32, rng)
        b = rng.standard_normal((nb, n, 8)).astype(np.float32)
        tag = f"cholesky+solve {nb}x{n}x{n} float32"
        row(tag, chs, jc, (a, b))
        if n > 64:
            row(f"{tag}: torch.linalg", chs, None, (a, b), BLOCKED_SOLVE=False)
    table(rows)


def run_explore_workloads():
    """Issue 19's Newton step and GP marginal likelihood (benchmarks/workloads.py, GPU sizes):
    functx against JAX (values, then times), and where functx's GPU time goes (torch.profiler:
    the kernels of 20 calls, by total time)."""
    import jax

    sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
    import workloads as W

    jax.config.update("jax_enable_x64", False)
    functx.config.update("jax_enable_x64", False)
    sizes = ((2, 64, 8), (2, 32)) if DRY else ((16, 1024, 64), (16, 512))
    for family, c in (
        ("newton", dict(P=sizes[0][0], n=sizes[0][1], d=sizes[0][2])),
        ("gp", dict(P=sizes[1][0], n=sizes[1][1], dim=3)),
    ):
        args = W.inputs(family, c)
        f = functx.jit(W.program(functx, family, c))
        j = jax.jit(W.program(jax, family, c))
        fa = functx.tree_util.tree_map(gpu, args)
        ja = jax.device_put(args)
        got = [host(x) for x in functx.tree_util.tree_leaves(f(*fa))]
        want = [np.asarray(x) for x in jax.tree_util.tree_leaves(j(*ja))]
        err = max(float(np.linalg.norm(g - w) / max(np.linalg.norm(w), 1e-30))
                  for g, w in zip(got, want))  # fmt: skip
        tf = timeit(lambda: f(*fa), sync_torch, reps=5)
        tj = timeit(lambda: j(*ja), sync_jax, reps=5)
        say(f"\n{family} {c}: functx {tf * 1e3:.3f} ms, JAX {tj * 1e3:.3f} ms, functx/JAX "
            f"{tf / tj:.2f}; rel err vs JAX {err:.1e}; {_graphs(f)}")  # fmt: skip
        _profile(f"functx {family}", lambda: f(*fa), rows=14)


def main():
    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU (interpreter)"
    say(f"device: {name}; torch {torch.__version__}; TORCH_ROW_MIN {tsort.TORCH_ROW_MIN}")
    if CHOL:
        run_chol_checks()
        say("\n| check | result | detail |\n|---|---|---|")
        for n, res, detail in RESULTS:
            say(f"| {n} | {res} | {detail} |")
        for part in (run_chol_kernels, run_chol_timings, run_explore_workloads):
            try:
                part()
            except Exception:
                traceback.print_exc()
        sys.exit(1 if any(r == "FAIL" for _, r, _ in RESULTS) else 0)
    if EXPLORE:
        run_small_checks()
        run_explore_checks()
        say("\n| check | result | detail |\n|---|---|---|")
        for n, res, detail in RESULTS:
            say(f"| {n} | {res} | {detail} |")
        for part in (run_explore_timings, run_explore_workloads):
            try:
                part()
            except Exception:
                traceback.print_exc()
        sys.exit(1 if any(r == "FAIL" for _, r, _ in RESULTS) else 0)
    run_small_checks()
    if not QUICK:
        run_checks()
    say("\n| check | result | detail |\n|---|---|---|")
    for n, res, detail in RESULTS:
        say(f"| {n} | {res} | {detail} |")
    if "--checks" not in sys.argv:
        for timings in (run_small_timings,) if QUICK else (run_small_timings, run_timings):
            try:
                timings()
            except Exception:
                traceback.print_exc()
    sys.exit(1 if any(r == "FAIL" for _, r, _ in RESULTS) else 0)


if __name__ == "__main__":
    main()
