"""The harness of the small functx-against-JAX scripts (``dct.py``, ``checkify.py``,
``sparse_bcoo.py``): each library runs in a process of its own (two libraries' thread pools in
one process distort each other on two cores), the libraries alternate round by round, and the
table gives the medians of wall and CPU time (all threads) with JAX's time over functx's.

A script defines ``worker(lib, reps)``, which checks its cases and returns ``{case: timed(...)}``,
and calls ``main(__file__, worker, case_names)``."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def timed(call, block, reps: int) -> tuple[float, float]:
    """Medians of ``reps`` calls of ``call()`` after three warm-ups, in ms: (wall, CPU), each
    call waited for with ``block`` (``block_until_ready``)."""
    for _ in range(3):
        block(call())
    walls, cpus = [], []
    for _ in range(reps):
        w, c = time.perf_counter(), time.process_time()
        block(call())
        walls.append(time.perf_counter() - w)
        cpus.append(time.process_time() - c)
    return 1e3 * statistics.median(walls), 1e3 * statistics.median(cpus)


def main(script: str, worker, cases) -> None:
    """``--worker LIB``: run ``worker`` and print its times as JSON; otherwise ``--rounds``
    alternating rounds of a worker process per library, then the table."""
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--worker", choices=["functx", "jax"])
    a = p.parse_args()
    if a.worker:
        print(json.dumps(worker(a.worker, a.reps)))
        return
    runs = {"functx": [], "jax": []}
    for r in range(a.rounds):
        for lib in ("functx", "jax")[:: 1 if r % 2 == 0 else -1]:
            cmd = [sys.executable, script, "--worker", lib, "--reps", str(a.reps)]
            text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs[lib].append(json.loads(text.strip().splitlines()[-1]))
    print("| case | functx ms (CPU) | JAX ms (CPU) | functx vs JAX: wall (CPU) |")
    print("|---|---|---|---|")
    for name in cases:
        (fw, fc), (jw, jc) = (
            [statistics.median(run[name][i] for run in runs[lib]) for i in (0, 1)]
            for lib in ("functx", "jax")
        )
        ratio = f"{jw / fw:.2f}x ({jc / fc:.2f}x)"
        print(f"| {name} | {fw:.2f} ({fc:.2f}) | {jw:.2f} ({jc:.2f}) | {ratio} |")
