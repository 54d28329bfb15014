"""tutorials/autodiff.py runs, checks itself against JAX and finite differences, and prints its
gradient Jaxpr and summary."""

from __future__ import annotations


def test_autodiff_tutorial_runs(tutorial_output):
    out = tutorial_output("autodiff.py")
    assert "{ lambda ; a:f32[]. let b:f32[] = cos a; c:f32[] = mul 2.0:f32[] b in (c,) }" in out
    assert "dot_general" in out and "reduce_sum" in out  # the model's gradient Jaxpr is shown
    assert "match JAX" in out
    assert "autodiff tutorial: all 5 checks passed" in out
