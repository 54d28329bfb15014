"""Dump the generated sources of a corpus of programs, to check that a change to the lowering's
index arithmetic leaves the generated code the same (run it on two trees, diff the folders).

Corpus: the C++ translation units (two units, as on this machine) and the Triton module of each
CPU workload of ``workloads.py`` (rendered only: nothing is compiled or launched; ``--gpu``: the
Triton modules of the GPU workloads instead, each with a hash of its text), and every C++
source the programs of ``tests/clients/programs/`` compile when run (recorded at
``cache.compile_cached``, the program cache off so that each jit lowers). One file per program
and backend under ``OUT``; a program whose rendering fails gets its error as its text.

    PYTHONPATH=<tree> FUNCTX_CACHE_DIR=<dir> \\
        python benchmarks/index_corpus.py OUT [--no-clients | --gpu]
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests" / "clients"))


class _Got(Exception):
    pass


def _closed_of(jx, fn, args):
    """The ClosedJaxpr ``jit(fn)`` hands the backend (after its passes), without compiling."""
    J = sys.modules["functx.jit"]  # (the module: ``functx.jit`` is the function)
    got = []

    def capture(closed, backend="cpu"):
        got.append(closed)
        raise _Got

    old, J.compile_jaxpr = J.compile_jaxpr, capture
    try:
        jx.jit(fn)(*args)
    except _Got:
        pass
    finally:
        J.compile_jaxpr = old
    return got[0]


def _triton_closed(jx, fn, args):
    """The ClosedJaxpr ``jit(fn)`` hands the Triton backend (``Jitted._final_jaxpr`` for a GPU
    placement: the attention pass, no C++ convolution taps)."""
    from functx.transforms import attention, outer_products, passes

    closed = jx.make_jaxpr(fn)(*args)
    closed = attention.fuse_attention(outer_products.factor_outer_products(passes.simplify(closed)))
    return passes.reshape_unit_reductions(passes.divide_by_reciprocals(closed))


def _workloads(out: pathlib.Path, mode: str = "cpu") -> None:
    import workloads as W

    import functx as jx
    from functx.lowering import lower, schedule
    from functx.lowering.compile import cpp_attention
    from functx.lowering.cpp import dot, program
    from functx.lowering.triton import program as tp

    for name, family, c in W.workload_list(mode):
        args = jx.tree_util.tree_map(jx.numpy.asarray, W.inputs(family, c))
        t0 = time.perf_counter()
        if mode != "gpu":  # (the C++ of the CPU sizes only)
            closed = _closed_of(jx, W.program(jx, family, c), args)
            try:
                g = lower.lower_jaxpr(cpp_attention.fuse(closed))
                dot.fold_product_updates(g)
                srcs = program.CppProgram(g, schedule.schedule(g, costly_once=True)).sources(
                    units=2, header="/h/prelude.h"
                )
                text = "\n// ---- unit ----\n".join(srcs)
            except Exception as err:  # (recorded: the diff shows a change in what fails)
                text = f"ERROR {type(err).__name__}: {err}"
            (out / f"cpp_{name}.cpp").write_text(text)
        t1 = time.perf_counter()
        try:
            cl = _triton_closed(jx, W.program(jx, family, c), args)
            if tp.uses_complex(cl.jaxpr):
                cl = tp.split_complex(cl)[0]
            cl = tp.dot.matvec_sums(tp.conv.recognize_convs(cl))
            g = lower.lower_jaxpr(cl)
            text = tp.TritonProgram(g, schedule.schedule(g)).source()
        except Exception as err:
            text = f"ERROR {type(err).__name__}: {err}"
        (out / f"triton_{name}.py").write_text(text)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        print(
            f"{name}: cpp {t1 - t0:.2f}s triton {time.perf_counter() - t1:.2f}s {digest}",
            flush=True,
        )


def _clients(out: pathlib.Path) -> None:
    import test_clients as T

    from functx.lowering import cache, program_cache

    program_cache.key_of = lambda closed: None
    seen: list = []
    compile_cached = cache.compile_cached

    def record(source, *a, **k):
        seen.append(source if isinstance(source, str) else "\n// ---- unit ----\n".join(source))
        return compile_cached(source, *a, **k)

    cache.compile_cached = record
    for path in sorted(T.PROGRAMS.glob("*.py")):
        seen.clear()
        t0 = time.perf_counter()
        try:
            with T._FreshConfig():
                T.run_program(path, with_functx=True)
        except Exception as err:
            seen.append(f"ERROR {type(err).__name__}: {err}")
        # (keyed by content: the order of compiles may change with the cache's state)
        texts = sorted(set(seen), key=lambda s: hashlib.sha256(s.encode()).hexdigest())
        (out / f"client_{path.stem}.cpp").write_text("\n// ==== program ====\n".join(texts))
        print(
            f"client {path.stem}: {len(texts)} sources {time.perf_counter() - t0:.1f}s", flush=True
        )


def main() -> None:
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    _workloads(out, "gpu" if "--gpu" in sys.argv else "cpu")
    if "--no-clients" not in sys.argv and "--gpu" not in sys.argv:
        _clients(out)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
