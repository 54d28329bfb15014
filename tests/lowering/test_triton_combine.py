"""Independent launches in one launch (``functx/lowering/triton/combine.py``): which consecutive
launches join (no part writes what another reads or writes, one grid axis, few programs, the
same warps, no matrix-product tiles) and that the joined programs compute what the separate
launches did, bit for bit, and what JAX computes. Kernels run in Triton's CPU interpreter
(``TRITON_INTERPRET=1``, set per test), or on a CUDA GPU with ``FUNCTX_TEST_TRITON_GPU=1``."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
jax = pytest.importorskip("jax")

import functx  # noqa: E402
from functx.lowering.triton import combine, gemm  # noqa: E402
from functx.lowering.triton.program import TritonProgram, compile_triton  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import workloads  # noqa: E402

ON_GPU = os.environ.get("FUNCTX_TEST_TRITON_GPU", "0") not in ("", "0")
DEV = "cuda" if ON_GPU else "cpu"


@pytest.fixture(autouse=True)
def interpreter(triton_gpu, monkeypatch):
    """Every test on Triton's interpreter, or on a CUDA GPU with FUNCTX_TEST_TRITON_GPU=1;
    products on torch.matmul (Triton GEMMs compute in TF32: test_triton_gemm.py checks them)."""
    monkeypatch.setattr(gemm, "TRITON_GEMM", False)
    return triton_gpu


class _Prog:
    """What the pass uses of a ``TritonProgram``: its definitions and its launch helpers."""

    _define = TritonProgram._define
    _launch = TritonProgram._launch

    def __init__(self, kernels):
        self.defs, self.host, self.root, self.n_sites = [], [], self, 0
        self.lines = []
        for name, params, body, grid, warps in kernels:
            self.defs.append(f"@triton.jit\ndef {name}({', '.join(params)}):\n    # {name}\n")
            self.defs[-1] += body.replace("; ", "\n    ")
            self._launch(name, grid, params, warps)
        self.lines, self.host = self.host, []


def _pid(p):
    return f"    f = tl.program_id(0) * 4 + tl.arange(0, 4); v = tl.load({p} + f)\n"


def _kernel(name, reads, writes, grid=2, warps=4, extra=""):
    body = "".join(_pid(r) for r in reads) + extra
    body += "".join(f"    tl.store({w} + f, v)\n" for w in writes)
    return (name, reads + writes, body, grid, warps)


def _joined(kernels, **switches):
    prog = _Prog(kernels)
    for k, v in switches.items():
        setattr(combine, k, v)
    host = combine.launches(prog, list(prog.lines))
    return prog, [ln.strip() for ln in host]


@pytest.fixture
def switches(monkeypatch):
    for k in ("COMBINE", "MAX_PARTS", "MAX_PROGRAMS", "SAME_WARPS"):
        monkeypatch.setattr(combine, k, getattr(combine, k))


def test_which_launches_join(switches):
    a = _kernel("ka", ["x"], ["a"])
    # independent: one launch of 4 programs; the parts take the program index as ``_fx_pid``
    prog, host = _joined([a, _kernel("kb", ["x", "y"], ["b"])])
    assert host == ["_L2(4, 1, x, a, y, b)"], host
    src = "\n".join(prog.defs)
    assert "def ka(_fx_pid, x, a):" in src and "def kb(_fx_pid, x, y, b):" in src
    assert "tl.program_id(0)" not in src.replace("    _fx_pid = tl.program_id(0)\n", "")
    assert "        kb(_fx_pid - 2, x, y, b)" in src
    assert re.findall(r"^_L\d+ = _fx_site\((\w+), 4\)$", src, re.M) == ["ka_with_kb"]
    # a part reading what another writes, writing what another reads or writes: apart
    for b in (["a"], ["b"]), (["y"], ["x"]), (["y"], ["a"]):
        assert len(_joined([a, _kernel("kb", *b)])[1]) == 2, b
    # through a name the host code binds to another buffer
    prog = _Prog([a, _kernel("kb", ["c"], ["b"])])
    host = combine.launches(prog, ["    c = a.view(2, 4)", *prog.lines])
    assert len(host) == 3
    # ... or bound twice (which buffer it names depends on where: a loop's carries)
    prog = _Prog([a, _kernel("kb", ["c"], ["b"])])
    assert len(combine.launches(prog, ["    c = a", "    c = y", *prog.lines])) == 4
    # any use but a load counts as a write (an atomic, a pointer computed first)
    for extra in ("    tl.atomic_add(x + f, v)\n", "    p = x + f; tl.store(p, v)\n"):
        assert len(_joined([a, _kernel("kb", ["x"], ["b"], extra=extra)])[1]) == 2, extra
    # the limits: programs, parts, warps (unless SAME_WARPS is off), no second grid axis or dot
    b = _kernel("kb", ["y"], ["b"], grid=combine.MAX_PROGRAMS - 1)
    assert len(_joined([a, b])[1]) == 2
    c = _kernel("kc", ["z"], ["c"])
    assert len(_joined([a, _kernel("kb", ["y"], ["b"]), c], MAX_PARTS=2)[1]) == 2
    assert len(_joined([a, _kernel("kb", ["y"], ["b"], warps=2)])[1]) == 2
    assert len(_joined([a, _kernel("kb", ["y"], ["b"], warps=2)], SAME_WARPS=False)[1]) == 1
    for extra in ("    z = tl.program_id(1)\n", "    z = tl.dot(v, v)\n"):
        assert len(_joined([a, _kernel("kb", ["y"], ["b"], extra=extra)])[1]) == 2, extra
    assert len(_joined([a, _kernel("kb", ["y"], ["b"])], COMBINE=False)[1]) == 2


@pytest.mark.parametrize(
    "family, c, fewer",
    [("kls", dict(n=12), 1), ("hmm", dict(T=6, S=3, M=2, steps=2), 1)],
)
def test_joined_launches_compute_what_separate_ones_did(family, c, fewer, switches):
    """The kernel least squares step (its loss and gradient sums: 3 -> 2 launches) and an HMM's
    EM steps (a host loop whose body joins two launches): bit for bit the separate launches'
    results, and JAX's."""
    args = workloads.inputs(family, c)
    jaxpr = functx.make_jaxpr(workloads.program(functx, family, c))(*args)
    leaves = [torch.as_tensor(np.asarray(x), device=DEV) for x in jax.tree_util.tree_leaves(args)]
    got, sites = {}, {}
    for on in (False, True):
        combine.COMBINE = on
        with functx.default_matmul_precision("highest"):  # (as JAX's on the CPU)
            exe = compile_triton(jaxpr)
        got[on] = exe(*leaves)
        sites[on] = len(re.findall(r"^_L\d+ = _fx_site", exe.source, re.M))
    assert sites[False] - sites[True] == fewer, sites
    want = jax.tree_util.tree_leaves(jax.jit(workloads.program(jax, family, c))(*args))
    for a, b, w in zip(got[False], got[True], want):
        assert torch.equal(a, b)
        np.testing.assert_allclose(b.cpu().numpy().reshape(np.shape(w)), w, rtol=2e-5, atol=2e-6)
