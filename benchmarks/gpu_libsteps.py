"""The GPU check of the library steps of the Triton backend: linear algebra through
``torch.linalg`` (``LibraryStep.torch``, ``functx/control/linalg.py``) and long-row sorts through
``torch.sort`` (``SortStep``, ``functx/lowering/triton/sort.py``), then timings against JAX and
torch, in one process.

Run from the repository root on a CUDA machine (JAX with CUDA installed beside functx):

    python benchmarks/gpu_libsteps.py            # checks, then timings
    python benchmarks/gpu_libsteps.py --checks   # checks only
    TRITON_INTERPRET=1 python benchmarks/gpu_libsteps.py --dry   # tiny sizes, CPU interpreter

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

import os
import statistics
import sys
import time
import traceback

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
sys.path.insert(0, os.getcwd())

import numpy as np  # noqa: E402
import torch  # noqa: E402

import functx  # noqa: E402
import functx.lax as flax  # noqa: E402
import functx.numpy as fnp  # noqa: E402
import functx.scipy.linalg as fsl  # noqa: E402
from functx.lowering.triton import sort as tsort  # noqa: E402

DRY = "--dry" in sys.argv  # tiny sizes (Triton's interpreter on the CPU)
N = 16 if DRY else 512  # a square matrix
B, NB = (4, 8) if DRY else (64, 64)  # a batch of B matrices NB x NB
R, C = (8, 160) if DRY else (4096, 4096)  # rows x columns of the sorts
RESULTS: list[tuple[str, str, str]] = []


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


def main():
    name = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "CPU (interpreter)"
    say(f"device: {name}; torch {torch.__version__}; TORCH_ROW_MIN {tsort.TORCH_ROW_MIN}")
    run_checks()
    say("\n| check | result | detail |\n|---|---|---|")
    for n, res, detail in RESULTS:
        say(f"| {n} | {res} | {detail} |")
    if "--checks" not in sys.argv:
        try:
            run_timings()
        except Exception:
            traceback.print_exc()
    sys.exit(1 if any(r == "FAIL" for _, r, _ in RESULTS) else 0)


if __name__ == "__main__":
    main()
