"""The first call of one workload of ``workloads.py`` in a fresh process (issue 20's first-call
item): prints the import time, the first call's wall and CPU time (the main process and, for
functx, its compilers: ``RUSAGE_CHILDREN``), the next calls' median and whether SymPy was
imported (not by functx since session 38: ``lowering/intexpr.py``).

For functx it also names where its fixed C++ libraries came from (``lowering/cpp/native.py``):
``installed`` where ``pip install`` built them (``setup.py``), ``built`` where this process
compiled them in the cache (a clone run in place): the empty-cache figures differ by about 1.5 s
of gcc CPU (session 36).

Run each library in a process of its own, alternating, with an empty cache and bytecode written::

    for i in 1 2 3 4 5; do
      env -u PYTHONDONTWRITEBYTECODE FUNCTX_CACHE_DIR=$(mktemp -d) STEPS=1 \
          python benchmarks/first_call.py functx gpt_block
      JAX_PLATFORMS=cpu STEPS=1 python benchmarks/first_call.py jax gpt_block
    done
"""

import os
import resource
import sys
import time

lib = sys.argv[1]
name = sys.argv[2] if len(sys.argv) > 2 else "gpt_block"
t_imp0 = time.perf_counter()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import workloads as W  # noqa: E402

if lib == "functx":
    import functx as jx
else:
    import jax as jx
t_imp = time.perf_counter() - t_imp0
family, c = {n: (f, c) for n, f, c in W.workload_list("cpu")}[name]
args = jx.tree_util.tree_map(jx.numpy.asarray, W.inputs(family, c))
fn = jx.jit(W.program(jx, family, c))
t0, c0 = time.perf_counter(), time.process_time()
jx.block_until_ready(fn(*args))
t1, c1 = time.perf_counter() - t0, time.process_time() - c0
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
steps = []
for _ in range(int(os.environ.get("STEPS", "5"))):
    s = time.perf_counter()
    jx.block_until_ready(fn(*args))
    steps.append(time.perf_counter() - s)
kids = usage.ru_utime + usage.ru_stime
step = 1e3 * sorted(steps)[len(steps) // 2] if steps else float("nan")
libs = ""
if lib == "functx":
    from functx.lowering.cpp import attention, gemm

    used = [gemm.LIBRARY, *attention._libraries.values()]
    libs = " libs " + ",".join(
        f"{x.name}:{'installed' if x.state.get('path') == x.prebuilt_path else 'built'}"
        for x in used
        if "path" in x.state
    )
print(
    f"{lib} {name} import {t_imp:.2f}s first {t1:.3f}s cpu {c1:.3f}s kids {kids:.2f}s "
    f"step_med {step:.1f}ms{libs} sympy {'sympy' in sys.modules}"
)
