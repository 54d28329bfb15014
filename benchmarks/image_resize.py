"""``functx.image.resize`` against ``jax.image.resize`` under jit, on a batch of images.

Each library runs in its own process (``--lib``), rounds alternating between them; every functx
result is first checked against JAX's. Prints the median wall and CPU time (all threads) per call.

    python benchmarks/image_resize.py --rounds 2
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

CASES = [
    ((8, 256, 256, 3), (8, 128, 128, 3), "linear"),
    ((8, 256, 256, 3), (8, 512, 512, 3), "cubic"),
    ((8, 256, 256, 3), (8, 224, 224, 3), "lanczos3"),
]


def _run(lib: str, reps: int) -> None:
    import jax
    import jax.image

    if lib == "functx":
        import functx
        import functx.image

        jit, resize, ready = functx.jit, functx.image.resize, functx.block_until_ready
    else:
        jit, resize, ready = jax.jit, jax.image.resize, jax.block_until_ready
    x = np.random.default_rng(0).standard_normal(CASES[0][0]).astype(np.float32)
    for shape_in, shape, method in CASES:
        f = jit(lambda x, s=shape, m=method: resize(x, s, m))
        start = time.perf_counter()
        out = ready(f(x))
        first = time.perf_counter() - start
        if lib == "functx":  # (JAX's own result, checked against in the functx process)
            want = jax.jit(lambda x, s=shape, m=method: jax.image.resize(x, s, m))(x)
            err = float(np.max(np.abs(np.asarray(out) - np.asarray(want))))
            assert err < 1e-4, (method, err)
        walls, cpus = [], []
        for _ in range(reps):
            w, c = time.perf_counter(), time.process_time()
            ready(f(x))
            walls.append(time.perf_counter() - w)
            cpus.append(time.process_time() - c)
        print(
            f"{lib} {method} {shape_in}->{shape}: first {first:.2f} s, median wall "
            f"{statistics.median(walls) * 1e3:.1f} ms, CPU {statistics.median(cpus) * 1e3:.1f} ms",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lib", choices=["functx", "jax"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reps", type=int, default=7)
    args = parser.parse_args()
    if args.lib:
        _run(args.lib, args.reps)
        return
    for r in range(args.rounds):
        for lib in ("functx", "jax") if r % 2 == 0 else ("jax", "functx"):
            cmd = [sys.executable, __file__, "--lib", lib, "--reps", str(args.reps)]
            subprocess.run(cmd, check=True)


if __name__ == "__main__":
    main()
