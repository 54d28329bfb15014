"""tutorials/mamba_selective_scan.py runs, checks itself (a float64 NumPy loop with a hand-written
backward pass, finite differences, JAX), and shows a gradient Jaxpr made of scans."""

from __future__ import annotations

import re


def test_mamba_tutorial_runs(tutorial_output):
    out = tutorial_output("mamba_selective_scan.py")
    assert "hand-written backward matches finite differences" in out
    assert "values and gradients match JAX" in out or "JAX is not installed" in out
    assert "{ lambda" in out and "associative_scan[" in out  # the gradient Jaxpr is printed
    assert "associative_scan reverse=True" in out and "(the transposed tangent scan)" in out
    counts = re.findall(r"L=(\d+): (\d+) associative_scan equations, (\d+) slice equations", out)
    assert len(counts) == 2, out
    (l1, s1, k1), (l2, s2, k2) = counts
    assert int(l1) < int(l2) and (s1, k1) == (s2, k2) and int(s1) >= 2
    assert "mamba tutorial: all checks passed" in out
