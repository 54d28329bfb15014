"""The client programs of issue 19's kinds (``tests/clients/programs/``) on a GPU, in one process.

Run from the repository root on a CUDA machine:

    python benchmarks/gpu_clients.py                 # every program of the list
    python benchmarks/gpu_clients.py small_cnn ...   # some of them

Each program runs as written (imports swapped, as ``tests/clients/test_clients.py`` does) with
functx's default device the GPU, so its eager operations and its jitted steps both run there
(Triton kernels and library calls), in full float32 (``FUNCTX_DEFAULT_MATMUL_PRECISION=highest``:
the reference is JAX on the CPU, whose products are full float32). Checks first: the same tree,
dtypes and values as JAX's run, every result on the GPU. Then the time of the whole program
(first run: compiles included; second run: warm caches), which says where the eager GPU path
costs, not a comparison with JAX.
"""

from __future__ import annotations

import os
import sys
import time
import traceback

os.environ["FUNCTX_DEFAULT_DEVICE"] = "gpu"
os.environ["FUNCTX_DEFAULT_MATMUL_PRECISION"] = "highest"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "tests", "clients"))

import jax  # noqa: E402
import numpy as np  # noqa: E402
import test_clients as tc  # noqa: E402

import functx  # noqa: E402

PROGRAMS = (
    "newton_logreg_solve_x64 gp_marginal_likelihood small_cnn mamba_conv_block fft_long_conv "
    "sort_topk_losses gnn_segment_sum implicit_diff_x64 eigh_spectral_x64 scan_training_random"
).split()


def check(name: str) -> bool:
    path = tc.PROGRAMS / f"{name}.py"
    with tc._FreshConfig():
        theirs, module = tc.run_program(path, with_functx=False)
        theirs = jax.tree_util.tree_map(np.asarray, theirs)
    times = []
    for _ in range(2):
        with tc._FreshConfig():
            t0 = time.perf_counter()
            ours, _ = tc.run_program(path, with_functx=True)
            functx.block_until_ready(ours)
            times.append(time.perf_counter() - t0)
    places = {str(leaf.device) for leaf in functx.tree_util.tree_leaves(ours)}
    try:
        tc.compare(ours, theirs, getattr(module, "RTOL", 1e-5), getattr(module, "ATOL", 1e-6))
        ok = places == {str(functx.devices("gpu")[0])}
        print(
            f"{name}: {'ok' if ok else 'FAIL'} (results on {sorted(places)}); "
            f"first run {times[0]:.2f} s, second {times[1]:.3f} s"
        )
    except AssertionError as e:
        ok = False
        print(f"{name}: FAIL {str(e)[:400]}")
    return ok


def main(names):
    print("GPU:", functx.devices("gpu")[0], "| JAX", jax.__version__, jax.devices()[0].platform)
    bad = []
    for name in names:
        try:
            if not check(name):
                bad.append(name)
        except Exception:  # noqa: BLE001 - report every program, then fail
            traceback.print_exc(limit=-4)
            bad.append(name)
    print("failed:", bad or "none")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or PROGRAMS))
