"""Matrix products of the CPU benchmark shapes: functx.jit against NumPy's matmul (its own
OpenBLAS) and jax.jit, in one process. functx generates vectorised loops for products of up to
2^24 multiply-adds and calls NumPy's BLAS above that (see ``lowering/cpp/dot.py``).

Shapes: the per-sample-gradient MLP (256-256-256-10, batch 128) forward and backward products,
and one square product above the threshold. Each library's time is the best of 3 alternating
rounds, each the median of ``--reps`` calls; results are checked against NumPy in float64.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

SHAPES = [  # (name, lhs shape, rhs shape)
    ("x @ w1: (128,256) @ (256,256)", (128, 256), (256, 256)),
    ("h @ w3: (128,256) @ (256,10)", (128, 256), (256, 10)),
    ("d3 @ w3.T: (128,10) @ (10,256)", (128, 10), (10, 256)),
    ("d2 @ w2.T: (128,256) @ (256,256)", (128, 256), (256, 256)),
    ("batched (128,1,256) @ (128,256,1)", (128, 1, 256), (128, 256, 1)),
    ("square (1024,1024) @ (1024,1024)", (1024, 1024), (1024, 1024)),
]


def median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]


CROSSOVER = [  # (lhs, rhs): square ones, the MLP's, the 3x3 convolution's tap products
    ((16, 16), (16, 16)),
    ((32, 32), (32, 32)),
    ((64, 64), (64, 64)),
    ((128, 10), (10, 256)),
    ((128, 256), (256, 10)),
    ((128, 256), (256, 256)),
    ((256, 64), (64, 64)),
    ((1024, 64), (64, 64)),
    ((2048, 64), (64, 64)),
    ((4096, 64), (64, 64)),
    ((8192, 64), (64, 64)),
    ((16384, 64), (64, 64)),
    ((64, 4096), (4096, 64)),
    ((128, 128), (128, 128)),
    ((256, 256), (256, 256)),
    ((512, 512), (512, 512)),
]


def crossover(reps):
    """Generated code (``fx_gemm``) against the BLAS call (pieces on the OpenMP threads, OpenBLAS
    on one thread) for the same product, both under functx.jit, by forcing
    ``lowering/cpp/dot.py``'s threshold ``_SMALL_GEMM`` each way: best of 3 alternating rounds of
    the median wall and CPU (``process_time``) time of ``reps`` calls."""
    import functx
    from functx.lowering.cpp import dot

    rng = np.random.default_rng(0)
    print(f"{'product (float32)':32s} {'MACs':>6s} {'generated us':>18s} {'BLAS us':>18s}")
    for sa, sb in CROSSOVER:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        fns = {}
        # (two precisions, which the C++ backend ignores, so that the two programs differ for the
        # program cache)
        for name, limit, prec in (("gen", 1 << 62, None), ("blas", 0, "highest")):
            dot._SMALL_GEMM = limit
            f = functx.jit(lambda x, y, p=prec: functx.numpy.matmul(x, y, precision=p))
            f.lower(a, b)  # (the threshold is read when the program is generated)
            functx.block_until_ready(f(a, b))
            fns[name] = f
        best = {}
        for _ in range(3):
            for name, f in fns.items():
                ws, cs = [], []
                for _ in range(reps):
                    t, c = time.perf_counter(), time.process_time()
                    functx.block_until_ready(f(a, b))
                    ws.append(time.perf_counter() - t)
                    cs.append(time.process_time() - c)
                w, c = sorted(ws)[reps // 2], sorted(cs)[reps // 2]
                pw, pc = best.get(name, (w, c))
                best[name] = (min(w, pw), min(c, pc))
        macs = sa[0] * sa[1] * sb[1]
        cells = [f"{w * 1e6:8.0f}/{c * 1e6:8.0f}" for w, c in (best["gen"], best["blas"])]
        name = f"{sa} @ {sb}"
        print(f"{name:32s} 2^{np.log2(macs):4.1f} {cells[0]:>18s} {cells[1]:>18s}")


def main():
    import functx
    import functx.numpy as fnp

    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument(
        "--crossover", action="store_true", help="generated code against BLAS (wall/CPU us)"
    )
    args = ap.parse_args()
    if args.crossover:
        crossover(args.reps)
        return
    rng = np.random.default_rng(0)
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        jax = None
    print(
        f"{'product (float32)':38s} {'functx us':>10s} {'numpy us':>10s} {'x numpy':>8s} "
        f"{'jax us':>9s} {'x jax':>7s} {'err':>8s}"
    )
    for name, sa, sb in SHAPES:
        a = rng.standard_normal(sa).astype(np.float32)
        b = rng.standard_normal(sb).astype(np.float32)
        fa, fb = fnp.asarray(a), fnp.asarray(b)
        f = functx.jit(lambda x, y: x @ y)
        want = a.astype(np.float64) @ b.astype(np.float64)
        got = np.asarray(f(fa, fb))
        err = float(np.abs(got - want).max() / np.abs(want).max())
        assert err < 1e-5, (name, err)
        runners = {
            "functx": lambda: functx.block_until_ready(f(fa, fb)),
            "numpy": lambda: np.matmul(a, b),
        }
        if jax is not None:
            ja, jb = jnp.asarray(a), jnp.asarray(b)
            jf = jax.jit(lambda x, y: x @ y)
            jf(ja, jb).block_until_ready()
            runners["jax"] = lambda: jf(ja, jb).block_until_ready()
        best = {}
        for _ in range(3):
            for lib, fn in runners.items():
                t = median_time(fn, args.reps)
                best[lib] = min(best.get(lib, t), t)
        fx, nx, jx = best["functx"], best["numpy"], best.get("jax", float("nan"))
        print(
            f"{name:38s} {fx * 1e6:10.1f} {nx * 1e6:10.1f} {nx / fx:8.2f} {jx * 1e6:9.1f} "
            f"{jx / fx:7.2f} {err:8.1e}"
        )


if __name__ == "__main__":
    main()
