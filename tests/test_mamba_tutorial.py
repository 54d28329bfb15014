"""tutorials/04_mamba_selective_scan.py runs, checks itself (a float64 NumPy loop with a
hand-written backward pass, finite differences, the compiled layer and gradient, JAX), shows a
gradient Jaxpr made of scans, the generated scan kernel, and timings against JAX."""

from __future__ import annotations

import re


def test_mamba_tutorial_runs(tutorial_output):
    out = tutorial_output("04_mamba_selective_scan.py")
    assert "hand-written backward matches finite differences" in out
    assert "{ lambda" in out and "associative_scan[" in out  # the gradient Jaxpr is printed
    assert "associative_scan reverse=True" in out and "(the transposed tangent scan)" in out
    counts = re.findall(r"L=(\d+): (\d+) associative_scan equations, (\d+) slice equations", out)
    assert len(counts) == 2, out
    (l1, s1, k1), (l2, s2, k2) = counts
    assert int(l1) < int(l2) and (s1, k1) == (s2, k2) and int(s1) >= 2
    # compiled: checked against the eager layer and the float64 backward pass
    assert "compiled layer matches the eager one" in out
    assert out.count("max rel. error vs float64 reference") == 5
    # the generated kernel: the scan's C++ loop
    assert "// kernel" in out and "associative_scan along axis 1" in out and "omp simd" in out
    # timings: the machine is named, functx against JAX in the same run
    assert re.search(r"machine: .*\d+ CPUs", out), out
    assert "lax.scan form: values and gradients match jax.jit's" in out
    assert re.search(r"lax\.scan gradient +functx\.jit +[\d.]+ ms +jax\.jit +[\d.]+ ms", out), out
    assert "tutorial 04: all checks passed" in out
