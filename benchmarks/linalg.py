"""Dense linear algebra on the CPU: functx (jit, C++; LAPACK called from the program:
``functx/lowering/cpp/lapack.py``) vs JAX (jit) vs NumPy/SciPy, in one process. Issue 19's
cases, cholesky + solve and eigh of a 512x512 matrix and of a batch of 64x64 matrices, and solve
(LU) beside them, float64 and float32.

Run: ``python benchmarks/linalg.py [batch] [--ops cs,eigh,solve]`` (batch defaults to 64). Prints
milliseconds per call: the best wall time and the best CPU time of the process (``process_time``)
over three interleaved rounds of repeats after a warm-up. On a machine whose cores are shared
with other work the CPU time is the steadier figure. Set ``OPENBLAS_NUM_THREADS=1`` there (and
``OMP_NUM_THREADS=1``): OpenBLAS's spinning threads otherwise make the LAPACK calls of all three
100x slower (a 256x256 Cholesky: 0.44 s against 1.3 ms on the 2-core test machine).

Measured on the 2-core test machine under load (float64 unless named, one thread each, CPU ms
per call, JAX 0.10.2 in the same run as "after"); before: the LAPACK host step (NumPy copies,
Fortran-order copies, a Python loop over a batch); after: ``functx/lowering/cpp/lapack.py``:

=====================  =============  =============  ======
case                   functx before  functx after   JAX
=====================  =============  =============  ======
cholesky+solve 512     10.2           4.9            3.7
cholesky+solve 64x64   4.1            1.9            1.4
lu 512                 6.3            5.4            5.3
lu 64x64               4.2            1.9            2.6
solve 512              10.2           7.2            5.1
solve 64x64            7.0            3.5            2.4
eigh 512               44.9           43.9           45.1
eigh 512 float32       44.4           24.3           26.1
qr 512 float32         29.5           13.0           13.7
svd 512 float32        120.8          48.6           50.7
=====================  =============  =============  ======

(eigh, qr and svd "before" ran NumPy's gufuncs, whose float32 LAPACK is NumPy's slower
OpenBLAS; now ``syevd``, ``geqrf``/``orgqr`` and ``gesdd`` of SciPy's, as JAX.)

What was left of the gap was not LAPACK: ``cho_factor(lower=False)`` transposed the 512x512
input and its factor (two C++ transpose kernels, which XLA folds into the custom call's layout),
and ``lu_solve`` permutes the right-hand side with a one-hot matrix product. Session 28 removed
the transposes (the upper factor is ``potrf('L')`` of the operand itself:
``control/linalg._UpperCholeskyStep``). ``--ops cs`` twice, alternating with the code before,
``OPENBLAS_NUM_THREADS=1``, load average 10-12, best CPU ms (JAX in the same runs):

======================  ==============  ==============  =========
case                    functx before   functx after    JAX
======================  ==============  ==============  =========
cs float64 512x512      3.7-4.0         2.6             3.3-4.6
cs float64 64x64x64     2.0-2.9         1.2-1.5         1.8-2.2
cs float32 512x512      1.4-1.5         1.0-1.6         1.9-2.1
cs float32 64x64x64     1.2-1.4         0.75-0.86       1.3-1.8
======================  ==============  ==============  =========
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.linalg as sl

import functx
import functx.numpy as fnp
import functx.scipy.linalg as fsl

try:
    import jax
    import jax.numpy as jnp
    import jax.scipy.linalg as jsl
except ImportError:  # pragma: no cover
    jax = None


def _sync(out):
    if jax is not None:
        jax.block_until_ready(out)


def best(fn, *args, repeat=10):
    """(best wall ms, best CPU ms) of ``repeat`` calls."""
    _sync(fn(*args))
    wall, cpu = [], []
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        _sync(fn(*args))
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - t0)
    return 1e3 * min(wall), 1e3 * min(cpu)


def spd(shape, dt, rng):
    a = rng.standard_normal(shape)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) / n + np.eye(n)).astype(dt)


def np_cs(a, b):
    if a.ndim == 2:
        return sl.cho_solve(sl.cho_factor(a), b)
    return np.linalg.solve(np.linalg.cholesky(a), b)  # (NumPy: no batched cho_solve)


# per case: (functx, JAX, NumPy/SciPy), each called as f(a, b)
CASES = {
    "cs": (
        lambda a, b: fsl.cho_solve(fsl.cho_factor(a), b),
        lambda a, b: jsl.cho_solve(jsl.cho_factor(a), b),
        np_cs,
    ),
    "eigh": (
        lambda a, b: fnp.linalg.eigh(a),
        lambda a, b: jnp.linalg.eigh(a),
        lambda a, b: np.linalg.eigh(a),
    ),
    "solve": (
        lambda a, b: fnp.linalg.solve(a, b),
        lambda a, b: jnp.linalg.solve(a, b),
        lambda a, b: np.linalg.solve(a, b),
    ),
}


def main():
    argv = sys.argv[1:]
    if "--ops" in argv:  # (its value is not the batch)
        i = argv.index("--ops")
        argv = argv[:i] + argv[i + 2 :]
    args = [a for a in argv if not a.startswith("--")]
    batch = int(args[0]) if args else 64
    ops = ["cs", "eigh", "solve"]
    if "--ops" in sys.argv:
        ops = sys.argv[sys.argv.index("--ops") + 1].split(",")
    functx.config.update("jax_enable_x64", True)
    if jax is not None:
        jax.config.update("jax_enable_x64", True)
    rng = np.random.default_rng(0)
    print(f"{'case':<30}{'functx wall/cpu ms':>22}{'JAX wall/cpu ms':>22}{'NumPy wall/cpu ms':>22}")
    for dt in (np.float64, np.float32):
        for shape in ((512, 512), (batch, 64, 64)):
            a = spd(shape, dt, rng)
            b = rng.standard_normal((*shape[:-1], 8)).astype(dt)
            for op in ops:
                fx, jx, nx = CASES[op]
                fns = [functx.jit(fx), jax.jit(jx) if jax is not None else None, nx]
                res = [[], [], []]
                for _ in range(3):  # interleaved rounds: load changes hit all three alike
                    for i, f in enumerate(fns):
                        if f is not None:
                            res[i].append(best(f, a, b))
                cells = [
                    f"{min(w for w, _ in r):9.3f} /{min(c for _, c in r):9.3f}" if r else "-"
                    for r in res
                ]
                name = f"{op} {np.dtype(dt).name} {'x'.join(map(str, shape))}"
                print(f"{name:<30}" + "".join(f"{c:>22}" for c in cells), flush=True)


if __name__ == "__main__":
    main()
